"""The words of the demo corpus: legal terms per topic, with inflected forms and synonyms.

Each topic (a BSARD-like category) has a code, a few subcategories and a
vocabulary. A line of vocabulary is one term::

    N le bail/les baux | le contrat de location/les contrats de location
    V résilier/résilie/résilient/résilié | mettre fin à/met fin à/mettent fin à/mis fin à
    A abusif/abusive/abusifs/abusives

``N`` nouns (``P`` for people, who can act in a question: "mon bailleur") give the singular and plural with their article (``l'…*f`` marks
a feminine noun whose article hides the gender); ``V`` verbs give the
infinitive, 3rd person singular and plural of the present, and the past
participle; ``A`` adjectives give masculine and feminine, singular and plural.
After ``|`` comes a synonym with the same shape: questions paraphrase with it,
articles rarely use it, so a lexical retriever finds most relevant articles but
not all. Inflected forms differ between articles (which favour one form) and
questions (which pick any), so a stemmer matters.

Kept as text because a lawyer can read and extend it; parsed once by
:mod:`leaderboard.demo.generator`.
"""

from __future__ import annotations

from typing import TypedDict


class TopicEntry(TypedDict):
    """One topic as written below: its vocabulary blocks are parsed by the generator."""

    key: str
    category: str
    code: str
    weight: int
    common: str
    subcategories: dict[str, str]


# Words every code uses: procedure, time limits, authorities.
GENERIC = """
N le tribunal/les tribunaux | la juridiction*f/les juridictions
N le juge/les juges | le magistrat/les magistrats
N la demande/les demandes | la requête/les requêtes
N le délai/les délais
N la décision/les décisions
N la disposition/les dispositions
N l'autorité*f/les autorités
N la partie/les parties
N le recours/les recours
N la notification/les notifications
N l'intéressé/les intéressés | la personne concernée/les personnes concernées
N le ministre/les ministres
N l'obligation*f/les obligations
N le droit/les droits
N la preuve/les preuves
V notifier/notifie/notifient/notifié | informer/informe/informent/informé
V déterminer/détermine/déterminent/déterminé
V prévoir/prévoit/prévoient/prévu
V introduire/introduit/introduisent/introduit
V statuer/statue/statuent/statué
A compétent/compétente/compétents/compétentes
A écrit/écrite/écrits/écrites
A applicable/applicable/applicables/applicables
"""

TOPICS: list[TopicEntry] = [
    {
        "key": "family",
        "category": "Famille",
        "code": "Code civil démo",
        "weight": 5,
        "common": """
P l'enfant/les enfants | le mineur/les mineurs
P le parent/les parents
N la famille/les familles
P l'époux/les époux | le conjoint/les conjoints
V élever/élève/élèvent/élevé
""",
        "subcategories": {
            "Mariage et cohabitation légale": """
N le mariage/les mariages | l'union*f/les unions
N la cohabitation/les cohabitations | la vie commune/les vies communes
N la déclaration/les déclarations
N le régime matrimonial/les régimes matrimoniaux | le contrat de mariage/les contrats de mariage
N l'officier de l'état civil/les officiers de l'état civil
N la résidence conjugale/les résidences conjugales | le logement familial/les logements familiaux
N le patrimoine/les patrimoines | les biens communs/les biens communs
N la dette/les dettes
V célébrer/célèbre/célèbrent/célébré | marier/marie/marient/marié
V contracter/contracte/contractent/contracté
V administrer/administre/administrent/administré | gérer/gère/gèrent/géré
A légal/légale/légaux/légales
A commun/commune/communs/communes
""",
            "Divorce et séparation": """
N le divorce/les divorces | la rupture/les ruptures
N la séparation/les séparations
N la pension alimentaire/les pensions alimentaires | la contribution alimentaire/les contributions alimentaires
N la désunion irrémédiable/les désunions irrémédiables
N la garde/les gardes | l'hébergement/les hébergements
N la médiation/les médiations
N le consentement mutuel/les consentements mutuels | l'accord/les accords
N la liquidation/les liquidations | le partage/les partages
V dissoudre/dissout/dissolvent/dissous | rompre/rompt/rompent/rompu
V prononcer/prononce/prononcent/prononcé
V verser/verse/versent/versé | payer/paie/paient/payé
A irrémédiable/irrémédiable/irrémédiables/irrémédiables
A alimentaire/alimentaire/alimentaires/alimentaires
""",
            "Filiation et adoption": """
N la filiation/les filiations
N l'adoption*f/les adoptions
N la reconnaissance/les reconnaissances
N la paternité/les paternités | la qualité de père/les qualités de père
N la maternité/les maternités
N l'adoptant/les adoptants
N l'acte de naissance/les actes de naissance
N le nom/les noms | le patronyme/les patronymes
V adopter/adopte/adoptent/adopté
V reconnaître/reconnaît/reconnaissent/reconnu
V contester/conteste/contestent/contesté | attaquer/attaque/attaquent/attaqué
A plénière/plénière/plénières/plénières
A biologique/biologique/biologiques/biologiques
""",
            "Successions et donations": """
N la succession/les successions | l'héritage/les héritages
N l'héritier/les héritiers | le successible/les successibles
N le testament/les testaments
N la donation/les donations | la libéralité/les libéralités
N la réserve héréditaire/les réserves héréditaires
N le notaire/les notaires
N le legs/les legs
N le défunt/les défunts | le de cujus/les de cujus
V hériter/hérite/héritent/hérité
V léguer/lègue/lèguent/légué | transmettre/transmet/transmettent/transmis
V renoncer/renonce/renoncent/renoncé
A testamentaire/testamentaire/testamentaires/testamentaires
A réservataire/réservataire/réservataires/réservataires
""",
        },
    },
    {
        "key": "housing",
        "category": "Logement",
        "code": "Code du logement démo",
        "weight": 5,
        "common": """
N le logement/les logements | l'habitation*f/les habitations
N le bail/les baux | le contrat de location/les contrats de location
P le bailleur/les bailleurs | le propriétaire/les propriétaires
P le locataire/les locataires | le preneur/les preneurs
V louer/loue/louent/loué
""",
        "subcategories": {
            "Bail de résidence principale": """
N le loyer/les loyers
N la garantie locative/les garanties locatives | la caution/les cautions
N le préavis/les préavis
N la résiliation/les résiliations
N l'indexation*f/les indexations
N l'état des lieux/les états des lieux
N l'indemnité*f/les indemnités
N la durée/les durées
V résilier/résilie/résilient/résilié | mettre fin à/met fin à/mettent fin à/mis fin à
V indexer/indexe/indexent/indexé
V restituer/restitue/restituent/restitué | rembourser/rembourse/remboursent/remboursé
A locatif/locative/locatifs/locatives
A anticipé/anticipée/anticipés/anticipées
""",
            "Insalubrité et réparations": """
N la réparation/les réparations | les travaux/les travaux
N l'humidité*f/les humidités | la moisissure/les moisissures
N l'insalubrité*f/les insalubrités
N le chauffage/les chauffages
N l'entretien/les entretiens
N la sécurité/les sécurités
N la salubrité/les salubrités
N le dégât/les dégâts | le dommage/les dommages
V réparer/répare/réparent/réparé
V entretenir/entretient/entretiennent/entretenu
V constater/constate/constatent/constaté
A insalubre/insalubre/insalubres/insalubres
A locatif/locative/locatifs/locatives
""",
            "Copropriété": """
N la copropriété/les copropriétés
N le syndic/les syndics | le gestionnaire/les gestionnaires
N l'assemblée générale*f/les assemblées générales
N les charges communes/les charges communes
N le lot/les lots
N la quote-part/les quotes-parts
N les parties communes/les parties communes
V convoquer/convoque/convoquent/convoqué
V répartir/répartit/répartissent/réparti | diviser/divise/divisent/divisé
V voter/vote/votent/voté
A privatif/privative/privatifs/privatives
A majoritaire/majoritaire/majoritaires/majoritaires
""",
            "Expulsion": """
N l'expulsion*f/les expulsions | l'éviction*f/les évictions
N l'huissier de justice/les huissiers de justice
N le jugement/les jugements
N l'occupant/les occupants
N les arriérés/les arriérés | l'impayé/les impayés
N le centre public d'action sociale/les centres publics d'action sociale | le CPAS/les CPAS
V expulser/expulse/expulsent/expulsé
V exécuter/exécute/exécutent/exécuté
V occuper/occupe/occupent/occupé
A forcé/forcée/forcés/forcées
A hivernal/hivernale/hivernaux/hivernales
""",
        },
    },
    {
        "key": "money",
        "category": "Argent",
        "code": "Code de droit économique démo",
        "weight": 4,
        "common": """
P le consommateur/les consommateurs
P l'entreprise*f/les entreprises | le professionnel/les professionnels
N le paiement/les paiements
N le montant/les montants | la somme/les sommes
V payer/paie/paient/payé | régler/règle/règlent/réglé
""",
        "subcategories": {
            "Dettes et crédit": """
N le crédit/les crédits | le prêt/les prêts
N le prêteur/les prêteurs | le créancier/les créanciers
N l'emprunteur/les emprunteurs | le débiteur/les débiteurs
N l'intérêt/les intérêts
N le remboursement/les remboursements
N le taux/les taux
N le règlement collectif de dettes/les règlements collectifs de dettes
N le recouvrement/les recouvrements
V emprunter/emprunte/empruntent/emprunté
V rembourser/rembourse/remboursent/remboursé
V recouvrer/recouvre/recouvrent/recouvré | récupérer/récupère/récupèrent/récupéré
A amiable/amiable/amiables/amiables
A usuraire/usuraire/usuraires/usuraires
""",
            "Achats et contrats de consommation": """
N la vente/les ventes | l'achat/les achats
N la garantie/les garanties
N le vendeur/les vendeurs | le commerçant/les commerçants
N le bien/les biens | le produit/les produits
N la rétractation/les rétractations | le renoncement/les renoncements
N la livraison/les livraisons
N le défaut de conformité/les défauts de conformité | le vice/les vices
N la clause abusive/les clauses abusives
V acheter/achète/achètent/acheté | acquérir/acquiert/acquièrent/acquis
V livrer/livre/livrent/livré
V rétracter/rétracte/rétractent/rétracté
A conforme/conforme/conformes/conformes
A défectueux/défectueuse/défectueux/défectueuses
""",
            "Banque et assurances": """
N le compte/les comptes
N la banque/les banques | l'établissement de crédit/les établissements de crédit
N l'assurance*f/les assurances
N l'assureur/les assureurs | la compagnie d'assurance/les compagnies d'assurance
N le sinistre/les sinistres
N la prime/les primes | la cotisation/les cotisations
N le virement/les virements
N la carte de paiement/les cartes de paiement
V assurer/assure/assurent/assuré
V indemniser/indemnise/indemnisent/indemnisé | dédommager/dédommage/dédommagent/dédommagé
V bloquer/bloque/bloquent/bloqué
A bancaire/bancaire/bancaires/bancaires
A frauduleux/frauduleuse/frauduleux/frauduleuses
""",
        },
    },
    {
        "key": "justice",
        "category": "Justice",
        "code": "Code judiciaire démo",
        "weight": 4,
        "common": """
N la procédure/les procédures
P l'avocat/les avocats | le conseil/les conseils
N l'audience*f/les audiences
V plaider/plaide/plaident/plaidé
""",
        "subcategories": {
            "Procès civil": """
N la citation/les citations | l'assignation*f/les assignations
N le défendeur/les défendeurs
N le demandeur/les demandeurs
N l'appel/les appels
N le greffe/les greffes
N le jugement par défaut/les jugements par défaut
N les frais de justice/les frais de justice | les dépens/les dépens
N la compétence territoriale/les compétences territoriales
V citer/cite/citent/cité | assigner/assigne/assignent/assigné
V interjeter/interjette/interjettent/interjeté
V comparaître/comparaît/comparaissent/comparu
A civil/civile/civils/civiles
A exécutoire/exécutoire/exécutoires/exécutoires
""",
            "Aide juridique": """
N l'aide juridique*f/les aides juridiques | l'assistance judiciaire*f/les assistances judiciaires
N le bureau d'aide juridique/les bureaux d'aide juridique
N les revenus/les revenus | les ressources/les ressources
N la gratuité/les gratuités
N le pro deo/les pro deo
N la désignation/les désignations
N l'avocat commis d'office/les avocats commis d'office
V désigner/désigne/désignent/désigné
V bénéficier/bénéficie/bénéficient/bénéficié
V justifier/justifie/justifient/justifié
A gratuit/gratuite/gratuits/gratuites
A partiel/partielle/partiels/partielles
""",
            "Infractions et victimes": """
N l'infraction*f/les infractions | le délit/les délits
N la victime/les victimes
N la plainte/les plaintes
N le procureur du Roi/les procureurs du Roi | le parquet/les parquets
N la constitution de partie civile/les constitutions de partie civile
N la peine/les peines | la sanction/les sanctions
N l'amende*f/les amendes
N le dommage moral/les dommages moraux | le préjudice/les préjudices
V porter plainte/porte plainte/portent plainte/porté plainte | dénoncer/dénonce/dénoncent/dénoncé
V poursuivre/poursuit/poursuivent/poursuivi
V condamner/condamne/condamnent/condamné
A pénal/pénale/pénaux/pénales
A intentionnel/intentionnelle/intentionnels/intentionnelles
""",
        },
    },
    {
        "key": "foreigners",
        "category": "Étrangers",
        "code": "Code des étrangers démo",
        "weight": 3,
        "common": """
P l'étranger/les étrangers | le ressortissant/les ressortissants
N le séjour/les séjours
N le territoire/les territoires
N l'office des étrangers/les offices des étrangers
V séjourner/séjourne/séjournent/séjourné | résider/réside/résident/résidé
""",
        "subcategories": {
            "Regroupement familial": """
N le regroupement familial/les regroupements familiaux | la réunification familiale/les réunifications familiales
N le membre de la famille/les membres de la famille
N le titre de séjour/les titres de séjour | le permis de séjour/les permis de séjour
N les moyens de subsistance/les moyens de subsistance
N le visa/les visas
N le conjoint rejoint/les conjoints rejoints
V rejoindre/rejoint/rejoignent/rejoint
V accompagner/accompagne/accompagnent/accompagné
V délivrer/délivre/délivrent/délivré
A stable/stable/stables/stables
A suffisant/suffisante/suffisants/suffisantes
""",
            "Asile et protection": """
N l'asile/les asiles
N le réfugié/les réfugiés | le demandeur d'asile/les demandeurs d'asile
N la protection subsidiaire/les protections subsidiaires
N la persécution/les persécutions
N l'accueil/les accueils
N le commissaire général/les commissaires généraux
N l'audition*f/les auditions | l'entretien personnel/les entretiens personnels
V persécuter/persécute/persécutent/persécuté
V accueillir/accueille/accueillent/accueilli
V octroyer/octroie/octroient/octroyé | accorder/accorde/accordent/accordé
A subsidiaire/subsidiaire/subsidiaires/subsidiaires
A fondé/fondée/fondés/fondées
""",
            "Éloignement et nationalité": """
N l'ordre de quitter le territoire/les ordres de quitter le territoire | l'éloignement/les éloignements
N la détention/les détentions | la rétention/les rétentions
N la nationalité/les nationalités | la citoyenneté/les citoyennetés
N la naturalisation/les naturalisations
N le centre fermé/les centres fermés
N l'interdiction d'entrée*f/les interdictions d'entrée
V quitter/quitte/quittent/quitté
V éloigner/éloigne/éloignent/éloigné | renvoyer/renvoie/renvoient/renvoyé
V acquérir/acquiert/acquièrent/acquis | obtenir/obtient/obtiennent/obtenu
A irrégulier/irrégulière/irréguliers/irrégulières
A belge/belge/belges/belges
""",
        },
    },
    {
        "key": "social",
        "category": "Protection sociale",
        "code": "Code de la sécurité sociale démo",
        "weight": 3,
        "common": """
N l'allocation*f/les allocations | la prestation/les prestations
P l'assuré social/les assurés sociaux | le bénéficiaire/les bénéficiaires
P l'organisme/les organismes | la caisse/les caisses
N la cotisation sociale/les cotisations sociales
V percevoir/perçoit/perçoivent/perçu | toucher/touche/touchent/touché
""",
        "subcategories": {
            "Chômage": """
N le chômage/les chômages
N le chômeur/les chômeurs | le demandeur d'emploi/les demandeurs d'emploi
N l'emploi convenable/les emplois convenables
N la disponibilité/les disponibilités
N le stage d'insertion/les stages d'insertion
N l'exclusion*f/les exclusions | la suspension/les suspensions
N l'organisme de paiement/les organismes de paiement
V inscrire/inscrit/inscrivent/inscrit
V refuser/refuse/refusent/refusé
V suspendre/suspend/suspendent/suspendu
A involontaire/involontaire/involontaires/involontaires
A disponible/disponible/disponibles/disponibles
""",
            "Maladie et invalidité": """
N la maladie/les maladies
N l'incapacité de travail*f/les incapacités de travail | l'invalidité*f/les invalidités
N le médecin-conseil/les médecins-conseils
N la mutualité/les mutualités | la mutuelle/les mutuelles
N l'indemnité d'incapacité*f/les indemnités d'incapacité
N les soins de santé/les soins de santé
N le remboursement des soins/les remboursements des soins
V reconnaître/reconnaît/reconnaissent/reconnu
V soigner/soigne/soignent/soigné
V rembourser/rembourse/remboursent/remboursé
A médical/médicale/médicaux/médicales
A temporaire/temporaire/temporaires/temporaires
""",
            "Pension et revenu d'intégration": """
N la pension de retraite/les pensions de retraite | la retraite/les retraites
N le revenu d'intégration/les revenus d'intégration | le revenu minimum/les revenus minimums
N la carrière/les carrières
N l'âge légal/les âges légaux
N la garantie de revenus/les garanties de revenus
N l'enquête sociale*f/les enquêtes sociales
N le projet individualisé/les projets individualisés
V calculer/calcule/calculent/calculé
V accorder/accorde/accordent/accordé | octroyer/octroie/octroient/octroyé
V cumuler/cumule/cumulent/cumulé
A anticipé/anticipée/anticipés/anticipées
A minimal/minimale/minimaux/minimales
""",
        },
    },
    {
        "key": "work",
        "category": "Travail",
        "code": "Code du travail démo",
        "weight": 4,
        "common": """
P le travailleur/les travailleurs | le salarié/les salariés
P l'employeur/les employeurs | le patron/les patrons
N le contrat de travail/les contrats de travail
N la rémunération/les rémunérations | le salaire/les salaires
V employer/emploie/emploient/employé | engager/engage/engagent/engagé
""",
        "subcategories": {
            "Licenciement": """
N le licenciement/les licenciements | le renvoi/les renvois
N le préavis/les préavis
N l'indemnité de rupture*f/les indemnités de rupture
N le motif grave/les motifs graves | la faute grave/les fautes graves
N la démission/les démissions
N le reclassement professionnel/les reclassements professionnels | l'outplacement/les outplacements
N l'ancienneté*f/les anciennetés
V licencier/licencie/licencient/licencié | congédier/congédie/congédient/congédié
V démissionner/démissionne/démissionnent/démissionné
V notifier/notifie/notifient/notifié
A abusif/abusive/abusifs/abusives
A manifestement déraisonnable/manifestement déraisonnable/manifestement déraisonnables/manifestement déraisonnables
""",
            "Congés et temps de travail": """
N le congé/les congés | les vacances/les vacances
N le congé de maternité/les congés de maternité
N le congé parental/les congés parentaux
N la durée du travail/les durées du travail | l'horaire/les horaires
N les heures supplémentaires/les heures supplémentaires
N le repos/les repos
N le crédit-temps/les crédits-temps | l'interruption de carrière*f/les interruptions de carrière
V prester/preste/prestent/presté | travailler/travaille/travaillent/travaillé
V prendre/prend/prennent/pris
V récupérer/récupère/récupèrent/récupéré
A annuel/annuelle/annuels/annuelles
A hebdomadaire/hebdomadaire/hebdomadaires/hebdomadaires
""",
            "Bien-être et discrimination": """
N le harcèlement/les harcèlements
N la discrimination/les discriminations | l'inégalité de traitement*f/les inégalités de traitement
N le conseiller en prévention/les conseillers en prévention
N l'accident du travail/les accidents du travail
N la santé/les santés
N le bien-être/les bien-être
N la protection contre les représailles/les protections contre les représailles
V harceler/harcèle/harcèlent/harcelé
V discriminer/discrimine/discriminent/discriminé
V prévenir/prévient/préviennent/prévenu
A moral/morale/moraux/morales
A sexuel/sexuelle/sexuels/sexuelles
""",
        },
    },
]
